import { APP_VIEWS } from '../apps/view-uris';
import { Tool } from '../tools/tool.decorator';
import { FORM_TRANSITION, FormTransitionTool } from './form-transition.tool';

@Tool({
  name: 'publish_form',
  title: 'Publish a form',
  description:
    'Publishes a draft form so it takes responses, or reopens a closed one. Publishing a published form changes nothing.',
  ...FORM_TRANSITION,
  ui: { resourceUri: APP_VIEWS.formPreview },
})
export class PublishFormTool extends FormTransitionTool {
  protected readonly target = 'published';
}
